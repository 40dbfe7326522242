from codemod.cli.main import main

main()
