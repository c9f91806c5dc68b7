-- filter-contains-any-of-several: 1 statement(s)
-- parameters: ['%cess%', '%cel%']
SELECT `orders`.amount AS `orders__amount`, 1 AS `orders__count` FROM orders AS `orders` WHERE (LOWER(`orders`.status) LIKE LOWER(@p1) OR LOWER(`orders`.status) LIKE LOWER(@p2)) ORDER BY 1 ASC NULLS LAST LIMIT 10000;
