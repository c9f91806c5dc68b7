-- granularity-day-berlin: 1 statement(s)
-- parameters: ['2024-02-29T23:00:00.000Z', '2024-11-30T22:59:59.999Z']
SELECT DATE_TRUNC('DAY', CAST(CONVERT_TIMEZONE('Europe/Berlin', CAST("orders".created_at AS TIMESTAMP_TZ)) AS TIMESTAMP_NTZ)) AS "orders__created_at_day", COUNT("orders".id) AS "orders__count" FROM orders AS "orders" WHERE ("orders".created_at >= CAST(:1 AS TIMESTAMP_TZ) AND "orders".created_at <= CAST(:2 AS TIMESTAMP_TZ)) GROUP BY 1 ORDER BY 1 ASC LIMIT 10000;
