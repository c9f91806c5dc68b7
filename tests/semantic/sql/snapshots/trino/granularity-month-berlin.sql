-- granularity-month-berlin: 1 statement(s)
-- parameters: ['2024-02-29T23:00:00.000Z', '2024-11-30T22:59:59.999Z']
SELECT DATE_TRUNC('MONTH', CAST(CAST("orders".created_at AS TIMESTAMP WITH TIME ZONE) AT TIME ZONE 'Europe/Berlin' AS TIMESTAMP)) AS "orders__created_at_month", COUNT("orders".id) AS "orders__count" FROM orders AS "orders" WHERE ("orders".created_at >= FROM_ISO8601_TIMESTAMP(?) AND "orders".created_at <= FROM_ISO8601_TIMESTAMP(?)) GROUP BY 1 ORDER BY 1 ASC LIMIT 10000;
