-- Data mining: for each category and return reason, the share of the quantity sold in stores that came back.
with sold as (
    select i_category as category, sum(ss_quantity) as quantity
    from store_sales, item where ss_item_sk = i_item_sk
    group by i_category
)
select i_category, r_reason_desc, sum(sr_return_quantity) as returned,
    sum(sr_return_quantity) * 1.0 / max(sold.quantity) as share
from store_returns, item, reason, sold
where sr_item_sk = i_item_sk
    and sr_reason_sk = r_reason_sk
    and sold.category = i_category
group by i_category, r_reason_desc
order by i_category, share desc, r_reason_desc
