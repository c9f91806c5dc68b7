-- filter-startswith: 1 statement(s)
-- parameters: ['Comp%']
SELECT `orders`.amount AS `orders__amount`, 1 AS `orders__count` FROM orders AS `orders` WHERE (`orders`.status ILIKE :p1 ESCAPE '\\') ORDER BY 1 ASC NULLS LAST LIMIT 10000;
