-- case-dimension-and-segments: 1 statement(s)
-- parameters: []
SELECT CASE WHEN `users`.lifetime_value >= 1000 THEN 'gold' WHEN `users`.lifetime_value >= 100 THEN 'silver' ELSE 'bronze' END AS `users__tier`, COUNT(`users`.id) AS `users__count` FROM users AS `users` WHERE `users`.country = 'DE' GROUP BY 1 ORDER BY 2 DESC LIMIT 10000;
