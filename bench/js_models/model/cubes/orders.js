import { usd, statuses, countOf } from './shared';

cube(`orders`, {
  sqlTable: `orders`,

  joins: {
    users: { relationship: `belongsTo`, sql: `${CUBE}.user_id = ${users.id}` },
    line_items: { relationship: `hasMany`, sql: `${CUBE}.id = ${line_items}.order_id` },
  },

  measures: {
    count: { type: `count`, drillMembers: [id, status, users.country] },
    total_amount: { sql: () => `${CUBE}.amount`, type: `sum`, ...usd },
    average_amount: { sql: `amount`, type: `avg` },
    customers: { sql: `user_id`, type: `countDistinct` },
    big_share: {
      sql: (CUBE) => `100.0 * ${CUBE.big_count} / NULLIF(${CUBE.count}, 0)`,
      type: `number`,
      format: `percent`,
    },
    big_count: { type: `count`, filters: [{ sql: `${CUBE}.amount >= 250` }] },
    ...Object.fromEntries(statuses.map((status) => [`${status}_count`, countOf(status)])),
  },

  dimensions: {
    id: { sql: `id`, type: `number`, primaryKey: true },
    status: { sql: `status`, type: `string` },
    amount: { sql: `amount`, type: `number` },
    size: {
      type: `string`,
      case: {
        when: [
          { sql: `${CUBE}.amount < 50`, label: `small` },
          { sql: `${CUBE}.amount < 250`, label: `medium` },
        ],
        else: { label: `large` },
      },
    },
    customer_country: { sql: `${CUBE.users.country}`, type: `string` },
    created_at: { sql: `created_at`, type: `time` },
  },

  segments: {
    completed: { sql: `${CUBE}.status = 'completed'` },
  },
});
