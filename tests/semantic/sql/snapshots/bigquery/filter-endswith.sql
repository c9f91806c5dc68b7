-- filter-endswith: 1 statement(s)
-- parameters: ['%ED']
SELECT `orders`.amount AS `orders__amount`, 1 AS `orders__count` FROM orders AS `orders` WHERE (LOWER(`orders`.status) LIKE LOWER(@p1)) ORDER BY 1 ASC NULLS LAST LIMIT 10000;
