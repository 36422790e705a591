module sriovop.local/standin

go 1.21
