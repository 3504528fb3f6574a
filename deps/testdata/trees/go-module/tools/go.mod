module example.com/shop/tools
