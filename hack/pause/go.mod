module sriovop.local/pause

go 1.21
