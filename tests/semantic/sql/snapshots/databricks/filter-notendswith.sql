-- filter-notendswith: 1 statement(s)
-- parameters: ['%ed']
SELECT `orders`.amount AS `orders__amount`, 1 AS `orders__count` FROM orders AS `orders` WHERE ((NOT `orders`.status ILIKE :p1 ESCAPE '\\') OR `orders`.status IS NULL) ORDER BY 1 ASC NULLS LAST LIMIT 10000;
