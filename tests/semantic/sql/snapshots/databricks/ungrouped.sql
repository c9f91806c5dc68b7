-- ungrouped: 1 statement(s)
-- parameters: [50]
SELECT `orders`.status AS `orders__status`, `orders`.amount AS `orders__amount`, 1 AS `orders__count` FROM orders AS `orders` WHERE (`orders`.amount >= :p1) ORDER BY 2 ASC NULLS LAST LIMIT 5;
