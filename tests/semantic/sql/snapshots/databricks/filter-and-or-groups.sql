-- filter-and-or-groups: 1 statement(s)
-- parameters: ['shipped', 20, 'US']
SELECT COUNT(`orders`.id) AS `orders__count` FROM orders AS `orders` LEFT JOIN users AS `users` ON `orders`.user_id = `users`.id WHERE ((`orders`.status = :p1) OR ((`orders`.amount > :p2) AND (`users`.country <> :p3 OR `users`.country IS NULL))) ORDER BY 1 DESC LIMIT 10000;
