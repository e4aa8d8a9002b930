-- Data mining: how many customers bought through all three channels in the same month of 2001.
with store_months as (
    select distinct ss_customer_sk as customer, d_moy as month
    from store_sales, date_dim where ss_sold_date_sk = d_date_sk and d_year = 2001
), catalog_months as (
    select distinct cs_bill_customer_sk as customer, d_moy as month
    from catalog_sales, date_dim where cs_sold_date_sk = d_date_sk and d_year = 2001
), web_months as (
    select distinct ws_bill_customer_sk as customer, d_moy as month
    from web_sales, date_dim where ws_sold_date_sk = d_date_sk and d_year = 2001
)
select count(distinct s.customer) as customers
from store_months s, catalog_months c, web_months w
where s.customer = c.customer and s.month = c.month
    and s.customer = w.customer and s.month = w.month
