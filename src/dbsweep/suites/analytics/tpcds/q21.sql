-- Data mining: the customers of each purchase estimate and credit rating, and how many of them use each channel.
select cd_purchase_estimate, cd_credit_rating, count(*) as customers,
    sum(case when exists (select * from store_sales where ss_customer_sk = c_customer_sk) then 1 else 0 end)
        as in_stores,
    sum(case when exists (select * from web_sales where ws_bill_customer_sk = c_customer_sk) then 1 else 0 end)
        as on_the_web
from customer, customer_demographics
where c_current_cdemo_sk = cd_demo_sk
group by cd_purchase_estimate, cd_credit_rating
order by cd_purchase_estimate, cd_credit_rating
