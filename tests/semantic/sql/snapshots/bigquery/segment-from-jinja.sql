-- segment-from-jinja: 1 statement(s)
-- parameters: []
SELECT COUNT(`orders`.id) AS `orders__count` FROM orders AS `orders` WHERE `orders`.status IN ('completed', 'shipped') ORDER BY 1 DESC LIMIT 10000;
