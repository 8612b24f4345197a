using System.Collections.ObjectModel;
using System.Globalization;
using System.Text.Json;
using BoundedWork.Hosting;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// What a queue's fleet-wide settings may be, how they are read from a row of <c>queue_settings</c> (no row: the
/// defaults), and how a change is described in the audit log.
/// </summary>
internal static class ClusterSettingsRules
{
    /// <summary>The longest <c>changedBy</c>, in characters.</summary>
    public const int MaxChangedByLength = 200;

    /// <summary>The defaults of a queue whose settings were never changed: no limits, one running item per key, each node's own worker count, version 0.</summary>
    public static WorkQueueClusterSettings Defaults { get; } = new();

    /// <summary>Checks every setting; one message per invalid setting, each naming it.</summary>
    /// <param name="settings">The settings to check.</param>
    /// <param name="maxWorkerCount">The executor's hard maximum worker count, when known.</param>
    public static List<string> GetValidationErrors(WorkQueueClusterSettings settings, int? maxWorkerCount)
    {
        var errors = new List<string>();
        if (settings.WorkersPerNode is int workers)
        {
            if (workers < 1)
            {
                errors.Add(Invariant($"WorkersPerNode must be at least 1 (was {workers})."));
            }
            else if (maxWorkerCount is int max && workers > max)
            {
                errors.Add(Invariant($"WorkersPerNode must not exceed the executor's MaxWorkerCount ({max}) (was {workers})."));
            }
        }

        if (settings.MaxRunning is < 1)
        {
            errors.Add(Invariant($"MaxRunning must be at least 1 (was {settings.MaxRunning})."));
        }

        if (settings.MaxRunningPerKey < 1)
        {
            errors.Add(Invariant($"MaxRunningPerKey must be at least 1 (was {settings.MaxRunningPerKey})."));
        }

        if (settings.StartsPerSecond is double rate && (!double.IsFinite(rate) || rate <= 0))
        {
            errors.Add(Invariant($"StartsPerSecond must be a finite number above 0 (was {rate})."));
        }

        if (settings.StartBurst is < 1)
        {
            errors.Add(Invariant($"StartBurst must be at least 1 (was {settings.StartBurst})."));
        }

        if (settings.FairShare is { } fair)
        {
            AddFairShareErrors(fair, settings.MaxRunningPerKey, errors);
        }

        return errors;
    }

    /// <summary>The fair share's checks, each message naming its setting.</summary>
    private static void AddFairShareErrors(WorkQueueFairShare fair, int maxRunningPerKey, List<string> errors)
    {
        if (fair.DefaultWeight is < 1 or > WorkQueueFairShare.MaxWeight)
        {
            errors.Add(Invariant($"FairShare.DefaultWeight must be between 1 and {WorkQueueFairShare.MaxWeight} (was {fair.DefaultWeight})."));
        }

        if (fair.Weights is null)
        {
            errors.Add("FairShare.Weights must not be null.");
        }
        else if (fair.Weights.Count > WorkQueueFairShare.MaxWeights)
        {
            errors.Add(Invariant($"FairShare.Weights must have at most {WorkQueueFairShare.MaxWeights} entries (had {fair.Weights.Count})."));
        }
        else
        {
            foreach (var (tenant, weight) in fair.Weights.OrderBy(w => w.Key, StringComparer.Ordinal))
            {
                if (EnqueueOptions.GetTenantError(tenant) is { } error)
                {
                    errors.Add("FairShare.Weights: a tenant is invalid: " + error.Replace("EnqueueOptions.Tenant", "a tenant", StringComparison.Ordinal));
                }
                else if (weight is < 1 or > WorkQueueFairShare.MaxWeight)
                {
                    errors.Add(Invariant($"FairShare.Weights['{tenant}'] must be between 1 and {WorkQueueFairShare.MaxWeight} (was {weight})."));
                }
            }
        }

        if (fair.MaxRunningPerTenant is < 1)
        {
            errors.Add(Invariant($"FairShare.MaxRunningPerTenant must be at least 1, or null for no bound (was {fair.MaxRunningPerTenant})."));
        }

        if (fair.StartsPerSecondPerTenant is double rate && (!double.IsFinite(rate) || rate <= 0))
        {
            errors.Add(Invariant($"FairShare.StartsPerSecondPerTenant must be a finite number above 0, or null for no limit (was {rate})."));
        }

        if (fair.StartsBurstPerTenant is < 1)
        {
            errors.Add(Invariant($"FairShare.StartsBurstPerTenant must be at least 1, or null for one second's worth of the rate (was {fair.StartsBurstPerTenant})."));
        }

        if (maxRunningPerKey > 1)
        {
            errors.Add(Invariant($"FairShare cannot be set while MaxRunningPerKey is above 1 (it is {maxRunningPerKey}): the fair claim keeps each ordering key's items one at a time."));
        }
    }

    /// <summary>The weights as the settings row stores them (a JSON object of tenant to weight; null when fair share is off).</summary>
    public static string? WeightsJson(WorkQueueFairShare? fair)
    {
        if (fair is null)
        {
            return null;
        }

        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var writer = new Utf8JsonWriter(buffer))
        {
            writer.WriteStartObject();
            foreach (var (tenant, weight) in fair.Weights.OrderBy(w => w.Key, StringComparer.Ordinal))
            {
                writer.WriteNumber(tenant, weight);
            }

            writer.WriteEndObject();
        }

        return System.Text.Encoding.UTF8.GetString(buffer.WrittenSpan);
    }

    /// <summary>Checks who made a change: 1 to 200 characters, none of them a control character.</summary>
    /// <returns>The message naming <c>changedBy</c>, or <see langword="null"/> when it is valid.</returns>
    public static string? CheckChangedBy(string changedBy) =>
        changedBy.Length is < 1 or > MaxChangedByLength || changedBy.Any(char.IsControl) || string.IsNullOrWhiteSpace(changedBy)
            ? Invariant($"changedBy must be 1 to {MaxChangedByLength} characters, not only white space, without control characters (was {changedBy.Length} characters).")
            : null;

    /// <summary>
    /// Reads settings from columns <paramref name="first"/> to <paramref name="first"/> + 7 (workers per node, max
    /// running, max running per key, starts per second, start burst, version, updated at, updated by); a row of nulls
    /// (no settings row) reads as the defaults.
    /// </summary>
    public static WorkQueueClusterSettings Read(NpgsqlDataReader reader, int first = 0) => new()
    {
        WorkersPerNode = reader.IsDBNull(first) ? null : reader.GetInt32(first),
        MaxRunning = reader.IsDBNull(first + 1) ? null : reader.GetInt32(first + 1),
        MaxRunningPerKey = reader.IsDBNull(first + 2) ? 1 : reader.GetInt32(first + 2),
        StartsPerSecond = reader.IsDBNull(first + 3) ? null : reader.GetDouble(first + 3),
        StartBurst = reader.IsDBNull(first + 4) ? null : reader.GetInt32(first + 4),
        Version = reader.IsDBNull(first + 5) ? 0 : reader.GetInt64(first + 5),
        UpdatedAt = reader.IsDBNull(first + 6) ? null : reader.GetFieldValue<DateTimeOffset>(first + 6),
        UpdatedBy = reader.IsDBNull(first + 7) ? null : reader.GetString(first + 7),
        FairShare = ReadFairShare(reader, first + 13),
    };

    /// <summary>Reads the fair share from its six columns at <paramref name="first"/> (see ClusterSql's FairShareColumns); off: null.</summary>
    private static WorkQueueFairShare? ReadFairShare(NpgsqlDataReader reader, int first)
    {
        if (reader.FieldCount < first + 6 || reader.IsDBNull(first) || !reader.GetBoolean(first))
        {
            return null;
        }

        var weights = new Dictionary<string, int>(StringComparer.Ordinal);
        if (!reader.IsDBNull(first + 2))
        {
            using var document = JsonDocument.Parse(reader.GetString(first + 2));
            foreach (var entry in document.RootElement.EnumerateObject())
            {
                weights[entry.Name] = entry.Value.GetInt32();
            }
        }

        return new WorkQueueFairShare
        {
            DefaultWeight = reader.GetInt32(first + 1),
            Weights = new ReadOnlyDictionary<string, int>(weights),
            MaxRunningPerTenant = reader.IsDBNull(first + 3) ? null : reader.GetInt32(first + 3),
            StartsPerSecondPerTenant = reader.IsDBNull(first + 4) ? null : reader.GetDouble(first + 4),
            StartsBurstPerTenant = reader.IsDBNull(first + 5) ? null : reader.GetInt32(first + 5),
        };
    }

    /// <summary>Describes a change for the audit log: each changed setting with its value before and after (<c>WorkersPerNode 4 -&gt; 8, MaxRunning none -&gt; 20</c>); <c>no change</c> when none did.</summary>
    public static string Describe(WorkQueueClusterSettings previous, WorkQueueClusterSettings current)
    {
        var changes = new List<string>();
        void Compare<TValue>(string name, TValue before, TValue after)
        {
            if (!EqualityComparer<TValue>.Default.Equals(before, after))
            {
                changes.Add($"{name} {Format(before)} -> {Format(after)}");
            }
        }

        Compare(nameof(WorkQueueClusterSettings.WorkersPerNode), previous.WorkersPerNode, current.WorkersPerNode);
        Compare(nameof(WorkQueueClusterSettings.MaxRunning), previous.MaxRunning, current.MaxRunning);
        Compare(nameof(WorkQueueClusterSettings.MaxRunningPerKey), previous.MaxRunningPerKey, current.MaxRunningPerKey);
        Compare(nameof(WorkQueueClusterSettings.StartsPerSecond), previous.StartsPerSecond, current.StartsPerSecond);
        Compare(nameof(WorkQueueClusterSettings.StartBurst), previous.StartBurst, current.StartBurst);
        Compare(nameof(WorkQueueClusterSettings.FairShare), previous.FairShare, current.FairShare);
        return changes.Count == 0 ? "no change" : string.Join(", ", changes);
    }

    private static string Format<TValue>(TValue value) => value is null ? "none" : Convert.ToString(value, CultureInfo.InvariantCulture) ?? "none";

    private static string Invariant(FormattableString text) => text.ToString(CultureInfo.InvariantCulture);
}
