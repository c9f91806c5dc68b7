-- granularity-week-berlin: 1 statement(s)
-- parameters: ['2024-02-29T23:00:00.000Z', '2024-11-30T22:59:59.999Z']
SELECT DATETIME_TRUNC(DATETIME(CAST(`orders`.created_at AS TIMESTAMP), 'Europe/Berlin'), ISOWEEK) AS `orders__created_at_week`, COUNT(`orders`.id) AS `orders__count` FROM orders AS `orders` WHERE (`orders`.created_at >= CAST(@p1 AS TIMESTAMP) AND `orders`.created_at <= CAST(@p2 AS TIMESTAMP)) GROUP BY 1 ORDER BY 1 ASC NULLS LAST LIMIT 10000;
