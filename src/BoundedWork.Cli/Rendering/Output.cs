using BoundedWork.Cli.Targets;
using Spectre.Console;

namespace BoundedWork.Cli.Rendering;

/// <summary>Where the tool writes: tables to standard output, problems to standard error, JSON verbatim.</summary>
internal static class Output
{
    private static readonly Lazy<IAnsiConsole> s_console = new(() =>
    {
        // Into a file or a pipe, lines go without the spaces tables pad them with (a terminal, where the live view
        // repaints in place, gets them as Spectre writes them).
        TextWriter output = Console.Out;
        if (Console.IsOutputRedirected)
        {
            var trimming = new TrimmingWriter(Console.Out);
            AppDomain.CurrentDomain.ProcessExit += (_, _) => trimming.Flush(); // a last line without its newline
            output = trimming;
        }

        var settings = new AnsiConsoleSettings { Out = new AnsiConsoleOutput(output) };
        if (Console.IsOutputRedirected)
        {
            // Spectre cannot tell that the trimming writer goes to a file or a pipe: say so, or it writes escape codes
            // there whenever the environment names a colour terminal (TERM).
            settings.Ansi = AnsiSupport.No;
            settings.ColorSystem = ColorSystemSupport.NoColors;
        }

        var console = AnsiConsole.Create(settings);
        if (Console.IsOutputRedirected)
        {
            // A file or a pipe has no width: COLUMNS if set, else wide enough not to wrap the tables.
            console.Profile.Width = int.TryParse(Environment.GetEnvironmentVariable("COLUMNS"), out var columns) && columns >= 40 ? columns : 160;
        }

        return console;
    });

    public static IAnsiConsole Terminal => s_console.Value;

    public static void Json(AdminAnswer answer) => Console.Out.WriteLine(answer.Text);

    public static void Error(string message) => Console.Error.WriteLine($"bw: {message}");

    /// <summary>
    /// Prints an answer the way every command does: a problem as <see cref="Problem"/> does; with <c>--json</c>
    /// (<paramref name="json"/>), the answer as it came; otherwise what <paramref name="render"/> writes of its JSON.
    /// </summary>
    public static int Answer(AdminAnswer answer, bool json, Action<System.Text.Json.JsonElement> render)
    {
        if (!answer.IsSuccess)
        {
            return Problem(answer, json);
        }

        if (json)
        {
            Json(answer);
        }
        else
        {
            render(answer.Json);
        }

        return ExitCodes.Ok;
    }

    /// <summary>Prints a problem answer (title, detail, each field's errors) and returns <see cref="ExitCodes.Refused"/>.</summary>
    public static int Problem(AdminAnswer answer, bool json)
    {
        if (json)
        {
            Json(answer);
        }

        var title = answer.Json.Text("title");
        var detail = answer.Json.Text("detail");
        Error($"{answer.Status} {(title.Length > 0 ? title : "refused")}: {detail}");
        if (answer.Json.Get("errors") is { ValueKind: System.Text.Json.JsonValueKind.Object } errors)
        {
            foreach (var field in errors.EnumerateObject())
            {
                foreach (var message in field.Value.EnumerateArray())
                {
                    Console.Error.WriteLine($"  {field.Name}: {message.GetString()}");
                }
            }
        }

        return ExitCodes.Refused;
    }
}
