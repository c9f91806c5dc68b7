-- demo-customers-by-year: 1 statement(s)
-- parameters: []
SELECT DATE_TRUNC('YEAR', FROM_UTC_TIMESTAMP(CAST(`orders`.created_at AS TIMESTAMP), 'UTC')) AS `orders__created_at_year`, COUNT(DISTINCT `orders`.user_id) AS `orders__customers` FROM orders AS `orders` GROUP BY 1 ORDER BY 1 ASC NULLS LAST LIMIT 10000;
