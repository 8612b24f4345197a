using System.Diagnostics;

namespace BoundedWork.Testing;

/// <summary>
/// The managed stacks of every thread of this process, for the message of a test that found something stuck: taken by
/// the <c>dotnet-stack</c> tool when it is installed (the file <c>BOUNDEDWORK_DOTNET_STACK</c> names, else on the PATH
/// or in <c>~/.dotnet/tools</c>); <c>.ci/run</c> installs it. Works while the ThreadPool is starved: the tool is another
/// process, and this side only starts it and reads its output synchronously.
/// </summary>
public static class ThreadStacks
{
    private static readonly TimeSpan s_patience = TimeSpan.FromSeconds(60);

    /// <summary>Gets the stacks as text, or a line that says why there are none.</summary>
    /// <returns>The tool's report, or the reason it could not be taken.</returns>
    public static string Capture()
    {
        if (Locate() is not { } tool)
        {
            return "(no thread stacks: dotnet-stack is not installed; set BOUNDEDWORK_DOTNET_STACK to it)";
        }

        try
        {
            var start = new ProcessStartInfo(tool, ["report", "-p", Environment.ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture)])
            {
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                UseShellExecute = false,
            };
            using var process = Process.Start(start)!;

            // The error output is read on a thread of its own (not the pool's), so that neither pipe can fill and stall the tool.
            var error = string.Empty;
            var errorReader = new Thread(() => error = process.StandardError.ReadToEnd()) { IsBackground = true };
            errorReader.Start();
            var report = process.StandardOutput.ReadToEnd();
            if (!process.WaitForExit(s_patience))
            {
                process.Kill(entireProcessTree: true);
                return "(no thread stacks: dotnet-stack did not finish)";
            }

            errorReader.Join(s_patience);
            return process.ExitCode == 0 ? report : $"(no thread stacks: dotnet-stack exited {process.ExitCode}: {error.Trim()})";
        }
        catch (Exception ex) when (ex is System.ComponentModel.Win32Exception or InvalidOperationException or IOException)
        {
            return $"(no thread stacks: {ex.Message})";
        }
    }

    private static string? Locate()
    {
        if (Environment.GetEnvironmentVariable("BOUNDEDWORK_DOTNET_STACK") is { Length: > 0 } named && File.Exists(named))
        {
            return named;
        }

        var home = Environment.GetFolderPath(Environment.SpecialFolder.UserProfile);
        var folders = (Environment.GetEnvironmentVariable("PATH") ?? string.Empty).Split(Path.PathSeparator, StringSplitOptions.RemoveEmptyEntries)
            .Append(Path.Combine(home, ".dotnet", "tools"));
        return folders.Select(folder => Path.Combine(folder, "dotnet-stack")).FirstOrDefault(File.Exists);
    }
}
