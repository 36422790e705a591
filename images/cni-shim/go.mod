module sriovop.local/cnishim

go 1.21
