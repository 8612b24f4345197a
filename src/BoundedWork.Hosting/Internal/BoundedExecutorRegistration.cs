namespace BoundedWork.Hosting.Internal;

/// <summary>Marks one <c>AddBoundedExecutor</c> call in the service collection; the registry lists these.</summary>
internal sealed class BoundedExecutorRegistration(string name)
{
    public string Name { get; } = name;

    /// <summary>Finds the registration whose name is exactly <paramref name="name"/> (options names are case-sensitive).</summary>
    public static BoundedExecutorRegistration? Find(IEnumerable<BoundedExecutorRegistration> registrations, string? name)
    {
        if (name is null)
        {
            return null;
        }

        foreach (var registration in registrations)
        {
            if (string.Equals(registration.Name, name, StringComparison.Ordinal))
            {
                return registration;
            }
        }

        return null;
    }
}
