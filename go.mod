module github.com/freshen-dev/freshen

go 1.26

require github.com/teambition/rrule-go v1.8.2 // indirect
