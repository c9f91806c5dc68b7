-- filter-lt: 1 statement(s)
-- parameters: [15]
SELECT `orders`.amount AS `orders__amount`, 1 AS `orders__count` FROM orders AS `orders` WHERE (`orders`.amount < @p1) ORDER BY 1 ASC NULLS LAST LIMIT 10000;
