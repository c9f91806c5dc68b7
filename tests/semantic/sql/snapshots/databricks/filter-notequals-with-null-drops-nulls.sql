-- filter-notequals-with-null-drops-nulls: 1 statement(s)
-- parameters: ['DE']
SELECT `orders`.amount AS `orders__amount`, 1 AS `orders__count` FROM orders AS `orders` LEFT JOIN users AS `users` ON `orders`.user_id = `users`.id WHERE (`users`.country <> :p1 AND NOT `users`.country IS NULL) ORDER BY 1 ASC NULLS LAST LIMIT 10000;
