module sriovop.test/apicheck

go 1.22
