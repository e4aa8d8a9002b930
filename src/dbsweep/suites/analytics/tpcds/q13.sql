-- Iterative: customers whose web spending grew faster than their store spending from 2001 to 2002.
with yearly as (
    select ss_customer_sk as customer, d_year as year, 's' as channel, sum(ss_net_paid) as paid
    from store_sales, date_dim where ss_sold_date_sk = d_date_sk and d_year in (2001, 2002)
    group by ss_customer_sk, d_year
    union all
    select ws_bill_customer_sk, d_year, 'w', sum(ws_net_paid)
    from web_sales, date_dim where ws_sold_date_sk = d_date_sk and d_year in (2001, 2002)
    group by ws_bill_customer_sk, d_year
)
select c_customer_id, c_last_name, s1.paid as store_2001, s2.paid as store_2002, w1.paid as web_2001,
    w2.paid as web_2002
from yearly s1, yearly s2, yearly w1, yearly w2, customer
where s1.customer = c_customer_sk
    and s1.customer = s2.customer and s1.customer = w1.customer and s1.customer = w2.customer
    and s1.channel = 's' and s1.year = 2001 and s2.channel = 's' and s2.year = 2002
    and w1.channel = 'w' and w1.year = 2001 and w2.channel = 'w' and w2.year = 2002
    and s1.paid > 0 and w1.paid > 0
    and w2.paid * 1.0 / w1.paid > s2.paid * 1.0 / s1.paid
order by c_customer_id
limit 100
