module gohot

go 1.19
