using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Text.Json;
using System.Text.Json.Serialization;
using BoundedWork.Hosting;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// <c>GET /process</c>, served on the local socket only: which process this is, so a tool that finds several sockets
/// can tell them apart. Nothing from the command line or the environment, which may hold secrets.
/// </summary>
internal sealed record ProcessDocument(
    int ProcessId,
    string ProcessName,
    string? Application,
    DateTimeOffset StartedAt,
    string Runtime,
    string BoundedWork,
    string Socket,
    IReadOnlyList<string> Executors)
{
    private static readonly Lazy<(string Name, DateTimeOffset Started)> s_process = new(static () =>
    {
        using var process = Process.GetCurrentProcess();
        return (process.ProcessName, new DateTimeOffset(process.StartTime.ToUniversalTime(), TimeSpan.Zero));
    });

    public static AdminReply Reply(string socketPath, IBoundedExecutorRegistry registry)
    {
        var (name, started) = s_process.Value;
        var document = new ProcessDocument(
            Environment.ProcessId,
            name,
            System.Reflection.Assembly.GetEntryAssembly()?.GetName().Name,
            started,
            RuntimeInformation.FrameworkDescription,
            typeof(BoundedExecutor).Assembly.GetName().Version?.ToString(3) ?? "unknown",
            socketPath,
            [.. registry.Names]);
        return AdminReply.Ok(document, ProcessJsonContext.Default.ProcessDocument);
    }
}

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web)]
[JsonSerializable(typeof(ProcessDocument))]
internal sealed partial class ProcessJsonContext : JsonSerializerContext;
