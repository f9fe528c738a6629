module proffs.test/profgen

go 1.19
