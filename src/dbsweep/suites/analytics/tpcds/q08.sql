-- Ad hoc: items priced 20 to 50 with 100 to 500 on hand in a 60-day window, that sold in stores.
select i_item_id, i_item_desc, i_current_price
from item, inventory, date_dim
where i_current_price between 20 and 50
    and inv_item_sk = i_item_sk
    and inv_date_sk = d_date_sk
    and d_date between date '2000-05-25' and date '2000-07-24'
    and inv_quantity_on_hand between 100 and 500
    and exists (select * from store_sales where ss_item_sk = i_item_sk)
group by i_item_id, i_item_desc, i_current_price
order by i_item_id
limit 100
