from relforge.cli import main

main()
