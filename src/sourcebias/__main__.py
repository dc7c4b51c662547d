from sourcebias.cli.main import main

main()
