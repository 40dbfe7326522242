from codemod.cli.entry import main

main()
