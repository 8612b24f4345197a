using System.Globalization;
using BoundedWork.Hosting;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>A durable schedule defined in code (<c>AddDurableSchedule</c>), or only a queue that runs schedules (<c>AddDurableSchedules</c>: no name).</summary>
internal sealed record DurableScheduleRegistration(string Queue, string? Name, RecurringSchedule? Schedule, DurableScheduleOptions? Options)
{
    /// <summary>The definition as stored in <c>code_definition</c>: a node that starts with another one stores its own.</summary>
    public string CodeDefinition =>
        string.Create(CultureInfo.InvariantCulture, $"{Queue}|{Schedule}|{Options!.MissedTicks}|{Options.MaxCatchUp}|{(long)Options.MisfireThreshold.TotalMilliseconds}");

    public const int MaxNameLength = 200;

    public static void ValidateName(string name)
    {
        ArgumentNullException.ThrowIfNull(name);
        if (name.Length is 0 or > MaxNameLength || name.Any(char.IsControl) || string.IsNullOrWhiteSpace(name))
        {
            throw new ArgumentException($"A durable schedule's name must be 1 to {MaxNameLength} characters without control characters (was '{name}').", nameof(name));
        }
    }
}
