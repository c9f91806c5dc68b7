-- demo-users-in-countries: 1 statement(s)
-- parameters: ['Germany', 'France']
SELECT "users".country AS "users__country", COUNT("users".id) AS "users__count" FROM users AS "users" WHERE ("users".country IN (?, ?)) GROUP BY 1 ORDER BY 1 ASC LIMIT 10000;
