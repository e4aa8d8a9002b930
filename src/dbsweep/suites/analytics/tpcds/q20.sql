-- Data mining: the items sold through every channel in 2001, and each channel's revenue for them.
with store_items as (
    select ss_item_sk as item, sum(ss_ext_sales_price) as revenue
    from store_sales, date_dim where ss_sold_date_sk = d_date_sk and d_year = 2001 group by ss_item_sk
), catalog_items as (
    select cs_item_sk as item, sum(cs_ext_sales_price) as revenue
    from catalog_sales, date_dim where cs_sold_date_sk = d_date_sk and d_year = 2001 group by cs_item_sk
), web_items as (
    select ws_item_sk as item, sum(ws_ext_sales_price) as revenue
    from web_sales, date_dim where ws_sold_date_sk = d_date_sk and d_year = 2001 group by ws_item_sk
)
select i_item_id, s.revenue as store, c.revenue as catalog, w.revenue as web
from store_items s, catalog_items c, web_items w, item
where s.item = c.item and s.item = w.item and s.item = i_item_sk
order by s.revenue + c.revenue + w.revenue desc, i_item_id
limit 100
