-- Reporting: what share of each store's sales in 2000 came back as returns.
with sold as (
    select ss_store_sk as store, sum(ss_ext_sales_price) as sales
    from store_sales, date_dim
    where ss_sold_date_sk = d_date_sk and d_year = 2000
    group by ss_store_sk
), returned as (
    select sr_store_sk as store, sum(sr_return_amt) as returns
    from store_returns, date_dim
    where sr_returned_date_sk = d_date_sk and d_year = 2000
    group by sr_store_sk
)
select s_store_name, s_store_id, sales, coalesce(returns, 0) as returns,
    coalesce(returns, 0) * 1.0 / sales as return_share
from store, sold left outer join returned on sold.store = returned.store
where s_store_sk = sold.store
order by return_share desc, s_store_id
