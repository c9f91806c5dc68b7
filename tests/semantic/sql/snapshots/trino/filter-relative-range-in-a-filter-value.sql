-- filter-relative-range-in-a-filter-value: 1 statement(s)
-- parameters: ['2024-05-01T04:00:00.000Z', '2024-07-01T03:59:59.999Z']
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE ("orders".created_at >= FROM_ISO8601_TIMESTAMP(?) AND "orders".created_at <= FROM_ISO8601_TIMESTAMP(?)) ORDER BY 1 ASC LIMIT 10000;
