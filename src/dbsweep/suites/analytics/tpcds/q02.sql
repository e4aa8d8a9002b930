-- Reporting: the hundred customers who spent most in stores in 2001 and also returned something there.
select c_customer_id, c_last_name, c_first_name, sum(ss_net_paid) as spent
from store_sales, customer, date_dim
where ss_customer_sk = c_customer_sk
    and ss_sold_date_sk = d_date_sk
    and d_year = 2001
    and c_customer_sk in (select sr_customer_sk from store_returns)
group by c_customer_id, c_last_name, c_first_name
order by spent desc, c_customer_id
limit 100
