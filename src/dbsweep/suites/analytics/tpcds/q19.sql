-- Data mining: how customers spread over their number of store tickets.
select tickets, count(*) as customers
from (
    select ss_customer_sk, count(distinct ss_ticket_number) as tickets
    from store_sales
    where ss_customer_sk is not null
    group by ss_customer_sk
) as per_customer
group by tickets
order by tickets
