-- filter-contains-any-of-several: 1 statement(s)
-- parameters: ['%cess%', '%cel%']
SELECT `orders`.amount AS `orders__amount`, 1 AS `orders__count` FROM orders AS `orders` WHERE (`orders`.status ILIKE :p1 ESCAPE '\\' OR `orders`.status ILIKE :p2 ESCAPE '\\') ORDER BY 1 ASC NULLS LAST LIMIT 10000;
