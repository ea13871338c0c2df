from headcount.cli import main

main()
