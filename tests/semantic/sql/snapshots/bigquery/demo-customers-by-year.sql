-- demo-customers-by-year: 1 statement(s)
-- parameters: []
SELECT DATETIME_TRUNC(DATETIME(CAST(`orders`.created_at AS TIMESTAMP), 'UTC'), YEAR) AS `orders__created_at_year`, COUNT(DISTINCT `orders`.user_id) AS `orders__customers` FROM orders AS `orders` GROUP BY 1 ORDER BY 1 ASC NULLS LAST LIMIT 10000;
