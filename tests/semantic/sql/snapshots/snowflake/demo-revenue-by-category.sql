-- demo-revenue-by-category: 1 statement(s)
-- parameters: []
SELECT "products".category AS "products__category", SUM("line_items".quantity * "line_items".price) AS "line_items__revenue", SUM("line_items".quantity) AS "line_items__units_sold" FROM line_items AS "line_items" LEFT JOIN products AS "products" ON "line_items".product_id = "products".id GROUP BY 1 ORDER BY 1 ASC LIMIT 10000;
