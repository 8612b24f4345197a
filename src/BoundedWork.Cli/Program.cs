using System.CommandLine;
using BoundedWork.Cli;
using BoundedWork.Cli.Commands;
using BoundedWork.Cli.Rendering;

var root = new RootCommand(
    """
    bw: operate and diagnose BoundedWork executors and the shared ThreadPool of a running .NET process.
    Reads and writes go through the app's diagnostics socket (builder.Services.AddBoundedWorkDiagnosticsSocket()),
    which answers while the ThreadPool is starved; 'doctor' and a read-only 'top' work on any .NET process.

    Exit codes: 0 done (doctor: not starved), 1 the app refused (unknown executor, invalid setting),
    2 wrong command line, 3 target unreachable or not BoundedWork, 4 doctor: starved,
    5 several processes (or sockets) could be meant: pick one with -p PID or --socket PATH.
    """)
{
    CommonOptions.ProcessId,
    CommonOptions.Socket,
    CommonOptions.Json,
    CommonOptions.Timeout,
    ReadCommands.Ps(),
    ReadCommands.List(),
    ReadCommands.Show(),
    TopCommand.Create(),
    WriteCommands.Resize(),
    WriteCommands.Set(),
    WriteCommands.Unpin(),
    PauseCommands.Pause(),
    PauseCommands.Resume(),
    ReadCommands.ThreadPool(),
    DeadLetterCommands.Create(),
    ItemCommands.Create(),
    ClusterCommands.Create(),
    ScheduleCommands.Create(),
    DoctorCommand.Create(),
};

var parsed = root.Parse(args);
if (parsed.Errors.Count > 0)
{
    foreach (var error in parsed.Errors)
    {
        Output.Error(error.Message);
    }

    Console.Error.WriteLine("Run 'bw --help' or 'bw COMMAND --help' for usage.");
    return ExitCodes.Usage;
}

try
{
    return await parsed.InvokeAsync(new InvocationConfiguration { EnableDefaultExceptionHandler = false });
}
catch (ToolException e)
{
    Output.Error(e.Message);
    return e.ExitCode;
}
catch (Exception e) when (e is IOException or UnauthorizedAccessException or System.Net.Sockets.SocketException or InvalidOperationException)
{
    Output.Error($"{e.GetType().Name}: {e.Message}");
    return ExitCodes.Unreachable;
}
