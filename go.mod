module github.com/freshen-dev/freshen

go 1.26
