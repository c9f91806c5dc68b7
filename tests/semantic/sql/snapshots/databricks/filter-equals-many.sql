-- filter-equals-many: 1 statement(s)
-- parameters: ['shipped', 'cancelled']
SELECT `orders`.amount AS `orders__amount`, 1 AS `orders__count` FROM orders AS `orders` WHERE (`orders`.status IN (:p1, :p2)) ORDER BY 1 ASC NULLS LAST LIMIT 10000;
