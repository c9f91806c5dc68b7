-- demo-count-by-status: 1 statement(s)
-- parameters: []
SELECT `orders`.status AS `orders__status`, COUNT(`orders`.id) AS `orders__count` FROM orders AS `orders` GROUP BY 1 ORDER BY 1 ASC NULLS LAST LIMIT 10000;
