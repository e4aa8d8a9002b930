-- Ad hoc: store profit per county and buying potential, for the stores of one state.
select s_county, hd_buy_potential, sum(ss_net_profit) as profit
from store_sales, store, household_demographics, date_dim
where ss_store_sk = s_store_sk
    and ss_hdemo_sk = hd_demo_sk
    and ss_sold_date_sk = d_date_sk
    and s_state = 'TN'
    and d_year between 1999 and 2001
group by s_county, hd_buy_potential
order by s_county, profit desc, hd_buy_potential
