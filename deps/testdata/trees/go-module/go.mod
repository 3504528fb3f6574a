module example.com/shop

go 1.26

require github.com/google/uuid v1.6.0
