-- demo-high-value-segment: 1 statement(s)
-- parameters: []
SELECT COUNT(`orders`.id) AS `orders__count` FROM orders AS `orders` WHERE `orders`.amount >= 500 AND `orders`.status = 'completed' ORDER BY 1 DESC LIMIT 10000;
