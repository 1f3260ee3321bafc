import Glibc
import UploadDaemon

exit(await UploadDaemonMain.run(arguments: Array(CommandLine.arguments.dropFirst())))
