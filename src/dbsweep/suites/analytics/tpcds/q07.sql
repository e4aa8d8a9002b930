-- Ad hoc: the store buyers of 2002 by gender, marital status and education, in five states.
select cd_gender, cd_marital_status, cd_education_status, count(distinct c_customer_sk) as buyers
from store_sales, customer, customer_demographics, customer_address, date_dim
where ss_customer_sk = c_customer_sk
    and c_current_cdemo_sk = cd_demo_sk
    and c_current_addr_sk = ca_address_sk
    and ss_sold_date_sk = d_date_sk
    and d_year = 2002
    and ca_state in ('TN', 'GA', 'TX', 'KY', 'VA')
group by cd_gender, cd_marital_status, cd_education_status
order by buyers desc, cd_gender, cd_marital_status, cd_education_status
