import Glibc
import UploadControl

exit(UploadControlMain.run(arguments: Array(CommandLine.arguments.dropFirst())))
