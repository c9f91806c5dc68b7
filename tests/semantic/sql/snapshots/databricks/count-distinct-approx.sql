-- count-distinct-approx: 1 statement(s)
-- parameters: []
SELECT APPROX_COUNT_DISTINCT(`items`.sku) AS `items__distinct_skus` FROM items AS `items` ORDER BY 1 DESC LIMIT 10000;
