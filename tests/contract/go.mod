module corral.invalid/contract

go 1.19
